"""Next-edit suggestions, model side: prompt formats (formats.toml), the rewrite → one edit diff, the discard rules
and the prediction pipeline behind `engine.api.Engine.predict_next_edit`. The LSP layer uses only the types."""

from .types import EditEvent, NextEditOptions, NextEditRequest, Prediction, TextEdit

__all__ = ["EditEvent", "NextEditOptions", "NextEditRequest", "Prediction", "TextEdit"]
