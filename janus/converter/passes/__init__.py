"""AST transformations, one concern per module; ``janus.converter.pipeline`` orders them."""
