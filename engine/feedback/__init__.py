"""What the model is told: verifier results distilled into the repair packet, and the prompt
(ARCHITECTURE.md, "The repair packet")."""
