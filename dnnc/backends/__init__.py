"""Backends that execute dnnc programs."""
