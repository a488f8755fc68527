"""The results directory: its layout, the one writer of its table and the one reader."""
