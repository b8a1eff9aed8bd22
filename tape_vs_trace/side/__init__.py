"""Side measurements beside the asv grid, each its own runner writing its own table."""
