"""Online verification and repair: source and target compared chunk by chunk, exactly as
of the target's committed position, and ranges read again while the pipeline streams."""
