"""Stage ``inference``: prompts, the engine and provider batches, the journal, rate limits,
usage and the model backends (``models/``); ``predict`` writes the official prediction files."""
