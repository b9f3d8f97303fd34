"""The environments a stage can train in besides the arena (docs/ENVIRONMENTS.md): built
once before any training to check each stage's `[env]`, never when the package loads."""
