#include "util/error.h"

#include <gtest/gtest.h>

#include <cerrno>

namespace shoal {
namespace {

TEST(ErrorTest, FactoriesSetTheCategory) {
  EXPECT_EQ(InvalidError("x").code(), ErrorCode::kInvalid);
  EXPECT_EQ(NotFoundError("x").code(), ErrorCode::kNotFound);
  EXPECT_EQ(UnsupportedError("x").code(), ErrorCode::kUnsupported);
  EXPECT_EQ(IOError("x").code(), ErrorCode::kIO);
  EXPECT_EQ(ConflictError("x").code(), ErrorCode::kConflict);
  EXPECT_EQ(TimeoutError("x").code(), ErrorCode::kTimeout);
  EXPECT_EQ(ErrorCodeName(ErrorCode::kNotFound), "not found");
}

TEST(ErrorTest, SystemErrorNamesThePathAndTheReason) {
  Error e = SystemError("cannot open", "/no/such", ENOENT);
  EXPECT_EQ(e.code(), ErrorCode::kNotFound);
  EXPECT_STREQ(e.what(), "cannot open '/no/such': No such file or directory");
  EXPECT_EQ(SystemError("cannot write", "f", EACCES).code(), ErrorCode::kIO);
}

TEST(ErrorTest, WithContextKeepsTheCategory) {
  Error e = WithContext(UnsupportedError("codec LZO"), "reading 'a.parquet'");
  EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
  EXPECT_STREQ(e.what(), "reading 'a.parquet': codec LZO");
}

}  // namespace
}  // namespace shoal
