def slugify(text):
    """Lower-case words joined by single hyphens."""
    return "-".join(text.strip().lower().split(" "))
