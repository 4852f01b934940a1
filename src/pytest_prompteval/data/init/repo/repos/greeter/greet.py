def greet(name):
    """A greeting for name; for a stranger when the name is empty."""
    return "Hello, " + name + "!"
