from tests.support.receiver import receiver  # noqa: F401 - the fixture
from tests.support.server import serve  # noqa: F401 - the fixture
