"""ctk.host."""
