"""sim: reserved package (see DESIGN.md); filled by later issues."""
