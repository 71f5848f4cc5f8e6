"""Language models: the litellm client and the embedded CPU model."""
