"""What the model is told: a verification of a tree judged and distilled into the repair
packet (`tree.py`; `checkout.py` for the person's own checkout), and the prompt
(ARCHITECTURE.md, "The repair packet")."""
