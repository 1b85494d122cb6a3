"""Per-paper artifact builders: which runs feed which table or figure, and the claims checked against them."""
