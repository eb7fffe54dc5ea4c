"""PinpointQA: small-object spatial questions (TPV, NRI, FSD, SSP) from 3D scenes, and their scoring."""
