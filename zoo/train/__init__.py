"""Pre-training and fine-tuning through `model.fit`."""
