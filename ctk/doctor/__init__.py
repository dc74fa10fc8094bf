"""ctk.doctor."""
