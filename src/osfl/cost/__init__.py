"""What a method costs: compute (multiply-accumulates per forward pass, ``flops``) and, later, communication."""
