#include "util/text_table.h"

#include <gtest/gtest.h>

namespace ct {
namespace {

TEST(TextTable, ColumnsLineUpInCodePointsWithNumbersToTheRight) {
  TextTable table({"name", "val_bpb"});
  table.add_row({"Ångström-ß", "1.25"});
  table.add_row({"ab", "10.5"});
  // "Ångström-ß" is 10 code points in 13 bytes: padded as 10, the columns line up on a terminal.
  EXPECT_EQ(table.render(2),
            "  name        val_bpb\n"
            "  ----------  -------\n"
            "  Ångström-ß     1.25\n"
            "  ab             10.5\n");
  EXPECT_EQ(display_width("Ångström-ß"), 10u);
}

TEST(TextTable, ChosenColumnsAreRightAlignedHeaderIncludedAndNoLineEndsInSpaces) {
  TextTable table({"rank", "name", "note"});
  table.align_right({true, false, false});
  table.add_row({"1", "a", ""});
  table.add_row({"10", "long name", "x"});
  EXPECT_EQ(table.render(),
            "rank  name       note\n"
            "----  ---------  ----\n"
            "   1  a\n"
            "  10  long name  x\n");
}

}  // namespace
}  // namespace ct
