"""AST transformations, one concern per module; ``janus.convert.pipeline`` orders them."""
