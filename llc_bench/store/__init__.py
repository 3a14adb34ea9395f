"""The result store: one JSON record per run, keyed by the config hash (``results``),
its queries and exports (``query``) and the run-time estimates read from it (``costs``)."""
