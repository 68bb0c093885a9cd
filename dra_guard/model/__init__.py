"""Pure views of manifests the rules read: objects, pod templates, every asked-for resource name,
drivers' opaque parameters, selectors, the allocation model, YAML inside strings, kustomize.
No file I/O: what a document references arrives already read (`read`).
"""
