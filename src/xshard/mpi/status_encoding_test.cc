// The status text MPI messages carry: code, detail and message survive, junk decodes safely.
#include "xshard/mpi/status_encoding.h"

#include <gtest/gtest.h>

namespace xs::mpi {
namespace {

TEST(StatusEncoding, CodeDetailAndMessageSurviveWithThePrefix) {
  const Status sent = InvalidArgument("device 0 failed: while loop 'w' exceeded 10 iterations")
                          .WithDetail(StatusDetail::kWhileIterationLimit);
  const std::string text = EncodeStatus(sent);
  EXPECT_EQ(text, "1:1:device 0 failed: while loop 'w' exceeded 10 iterations");
  const Status got = DecodeStatus(text, "process 0: ");
  EXPECT_EQ(got.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(got.detail(), StatusDetail::kWhileIterationLimit);
  EXPECT_EQ(got.message(), "process 0: device 0 failed: while loop 'w' exceeded 10 iterations");
}

TEST(StatusEncoding, AMessageWithColonsIsKeptWhole) {
  const Status got = DecodeStatus(EncodeStatus(Internal("a: b: c")), "");
  EXPECT_EQ(got.code(), StatusCode::kInternal);
  EXPECT_EQ(got.detail(), StatusDetail::kNone);
  EXPECT_EQ(got.message(), "a: b: c");
}

TEST(StatusEncoding, OkAndJunkDecodeSafely) {
  EXPECT_TRUE(DecodeStatus(EncodeStatus(OkStatus()), "p: ").ok());
  EXPECT_TRUE(DecodeStatus("", "p: ").ok());
  EXPECT_TRUE(DecodeStatus("no colon", "p: ").ok());
  const Status unknown = DecodeStatus("3:99:text", "");
  EXPECT_EQ(unknown.code(), StatusCode::kUnimplemented);
  EXPECT_EQ(unknown.detail(), StatusDetail::kNone);
  EXPECT_EQ(unknown.message(), "text");
  // A message right after the code (no detail field) is kept whole.
  EXPECT_EQ(DecodeStatus("3:text: more", "").message(), "text: more");
  EXPECT_EQ(DecodeStatus("99:x", "").code(), StatusCode::kInternal);
}

}  // namespace
}  // namespace xs::mpi
