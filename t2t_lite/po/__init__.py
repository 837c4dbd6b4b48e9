"""Gettext catalogs (PO files): reading and writing them byte for byte."""
