"""Spec mode: a spec in, a module and its frozen tests out."""
