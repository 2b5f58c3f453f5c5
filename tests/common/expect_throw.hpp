// expect_throw: a GoogleTest helper for validation tests (exception type and message).
#pragma once

#include <gtest/gtest.h>

#include <exception>
#include <functional>
#include <string>

namespace mxfp4::test {

/// Expects f() to throw exactly an Ex (or a subclass) whose message contains `needle`; any
/// other outcome is a test failure naming what happened.
template <class Ex>
void expect_throw(const std::function<void()>& f, const std::string& needle) {
  try {
    f();
    ADD_FAILURE() << "no exception; expected one mentioning \"" << needle << "\"";
  } catch (const Ex& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << "message: " << e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong exception type for \"" << needle << "\": " << e.what();
  }
}

}  // namespace mxfp4::test
