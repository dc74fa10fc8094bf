"""ctk.hook."""
