from slug import slugify


def test_basic():
    assert slugify("Hello World") == "hello-world"


def test_double_space():
    assert slugify("hello  world") == "hello-world"
