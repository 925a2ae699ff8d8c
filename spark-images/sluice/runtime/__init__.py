"""Running a pipeline: Spark session, snapshot phase, progress."""
