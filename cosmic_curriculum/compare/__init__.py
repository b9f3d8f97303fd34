"""`compare`: does the curriculum pay? Arms (the curriculum, its last stage alone, one
stage alone) trained at the same total timesteps and seeds, each in a sub-workspace that
`run` trains and resumes, then measured on the last stage (docs/ARCHITECTURE.md)."""
