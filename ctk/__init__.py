"""ctk: an admin toolkit for GPU container nodes."""

__version__ = "0.1.0"
