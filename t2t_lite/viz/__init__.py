"""Pictures of what the model does: attention heatmaps and line views (t2t_lite.viz.attention)."""
