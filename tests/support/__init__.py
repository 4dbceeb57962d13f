"""What the tests share that is not a fixture: reading topics back (``consume``), the
``cykafka`` command run in-process or as a child (``cli``), the fault drivers, the
certificates, the registry mock and the reference data.  ``tests/conftest.py`` puts
``tests/`` on ``sys.path``, so every test folder imports ``support.<module>``."""
