"""What a rule may import besides `model` and `contract`: its declarations, options and the
configuration, device classes, the cross-object context, and the admission form of a rule.
"""
