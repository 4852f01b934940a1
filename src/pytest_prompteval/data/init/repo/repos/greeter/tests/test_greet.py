from greet import greet


def test_name():
    assert greet("Ada") == "Hello, Ada!"


def test_empty_name():
    assert greet("") == "Hello, stranger!"
