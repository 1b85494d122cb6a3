"""Training protocols: the server side of one round (one_shot) and T rounds of local training plus a server
method (multi_round). They compute only: the stages load their inputs and write their outputs."""
