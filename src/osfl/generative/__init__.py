"""Generative clients and the data they give the server: training a conditional VAE on a client's data
(:mod:`.cvae`), and on the server generating labelled images from the uploaded decoders and cleaning them
(:mod:`.synthesis`). FedMHO and FedCVAE use these (FedMHO SPEC §1.2, §1.4, §1.5)."""
