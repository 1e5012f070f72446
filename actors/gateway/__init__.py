"""The ``gateway`` actor: the ``tcp://`` face of a host (CURVE + ZAP) and its remote mirrors."""
