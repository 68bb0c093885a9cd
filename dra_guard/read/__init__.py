"""The reading layer, the only package on the checking side that touches the file system: which
files (`walk`), bytes to objects as kubectl sends them (`loader`), inputs with non-manifests
skipped and charts rendered (`inputs`).
"""
