"""ctk.runtime_config."""
