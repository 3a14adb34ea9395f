"""Paper tables and figures: reference numbers, table configs, planning (config hashes),
execution through Hydra multiruns, aggregation over seeds, rendering, figures."""
