"""ctk.system."""
