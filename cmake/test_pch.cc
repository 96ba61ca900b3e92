// The translation unit that builds the tests' precompiled header (cmake/test_pch.h).
