from tests.support.receiver import receiver  # noqa: F401 - the fixture
