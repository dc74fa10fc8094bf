"""ctk.cdi."""
