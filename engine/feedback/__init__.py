"""Distillation: verifier results -> the repair packet a model is told (DESIGN §4.2)."""
