#include "http/multipart.h"

#include <gtest/gtest.h>

namespace pagoda::http {
namespace {

TEST(MultipartTest, ReadsFieldsAndFiles) {
  const std::string body =
      "--XyZ\r\nContent-Disposition: form-data; name=\"purpose\"\r\n\r\nbatch\r\n"
      "--XyZ\r\nContent-Disposition: form-data; name=\"file\"; filename=\"in; 1.jsonl\"\r\n"
      "Content-Type: application/jsonl\r\n\r\n{\"a\":1}\r\n{\"b\":2}\n\r\n--XyZ--\r\n";
  auto parts = ParseMultipartForm("multipart/form-data; boundary=XyZ", body);
  ASSERT_TRUE(parts.ok()) << parts.status().ToString();
  ASSERT_EQ(parts->size(), 2u);
  EXPECT_EQ((*parts)[0].name, "purpose");
  EXPECT_FALSE((*parts)[0].filename);
  EXPECT_EQ((*parts)[0].data, "batch");
  EXPECT_EQ((*parts)[1].name, "file");
  EXPECT_EQ((*parts)[1].filename, "in; 1.jsonl");
  EXPECT_EQ((*parts)[1].content_type, "application/jsonl");
  EXPECT_EQ((*parts)[1].data, "{\"a\":1}\r\n{\"b\":2}\n");
}

TEST(MultipartTest, QuotedBoundaryAndEmptyPart) {
  const std::string body = "--a b\r\nContent-Disposition: form-data; name=\"x\"\r\n\r\n\r\n--a b--";
  auto parts = ParseMultipartForm("Multipart/Form-Data; boundary=\"a b\"", body);
  ASSERT_TRUE(parts.ok()) << parts.status().ToString();
  ASSERT_EQ(parts->size(), 1u);
  EXPECT_EQ((*parts)[0].data, "");
}

TEST(MultipartTest, MalformedBodiesAreClearErrors) {
  const char* ct = "multipart/form-data; boundary=B";
  EXPECT_FALSE(ParseMultipartForm("application/json", "{}").ok());
  EXPECT_FALSE(ParseMultipartForm("multipart/form-data", "--B--").ok());
  EXPECT_FALSE(ParseMultipartForm(ct, "no boundary here").ok());
  EXPECT_FALSE(ParseMultipartForm(ct, "--B\r\nContent-Disposition: form-data; name=\"x\"\r\n\r\ntruncated").ok());
  EXPECT_FALSE(ParseMultipartForm(ct, "--B\r\nX-Other: 1\r\n\r\nv\r\n--B--").ok());
  EXPECT_FALSE(ParseMultipartForm(ct, "--B\r\nContent-Disposition: form-data; name=\"x\"").ok());
  EXPECT_FALSE(ParseMultipartForm(ct, "--Bjunk").ok());
}

}  // namespace
}  // namespace pagoda::http
