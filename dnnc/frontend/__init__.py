"""Frontends: turn models from other frameworks into tcp programs."""
