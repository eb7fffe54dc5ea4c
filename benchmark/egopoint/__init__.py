"""EgoPoint-Bench: scoring (TF / single choice / open-ended judge), Point-Sim geometry, clarity-aware
keyframe selection. See docs/video.md."""
