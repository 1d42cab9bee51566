#include "parquet/assembly.h"

#include <cstring>

#include "util/error.h"

namespace shoal::parquet {

namespace {

class Assembler {
 public:
  explicit Assembler(std::vector<LeafData>& leaves) : leaves_(leaves) {}

  ColumnVector Build(const Field& field, std::vector<const Field*>& lists) {
    LeafData& leaf = leaves_[field.first_column];
    // Fast path: a top-level leaf with no repetition has one slot per level.
    if (lists.empty() && leaf.repetition_levels.empty() && field.kind == Field::Kind::kPrimitive) {
      return FlatPrimitive(field, leaf);
    }
    std::vector<int64_t> slots = Slots(leaf, lists);
    ColumnVector column;
    column.field = &field;
    column.length = static_cast<int64_t>(slots.size());
    if (field.nullable) SetValidity(leaf, slots, field.definition_level, &column);
    switch (field.kind) {
      case Field::Kind::kPrimitive: Primitive(field, leaf, slots, &column); break;
      case Field::Kind::kStruct:
        for (const Field& child : field.children) {
          column.children.push_back(Build(child, lists));
          if (column.children.back().length != column.length) {
            throw InvalidError("the columns under '" + field.name + "' disagree: '" + child.name +
                               "' has " + std::to_string(column.children.back().length) +
                               " values where '" + field.children[0].name + "' has " +
                               std::to_string(column.length));
          }
        }
        break;
      case Field::Kind::kList:
      case Field::Kind::kMap: {
        ListOffsets(field, leaf, slots, &column);
        lists.push_back(&field);
        column.children.push_back(Build(field.children[0], lists));
        lists.pop_back();
        if (column.children[0].length != column.offsets.back()) {
          throw InvalidError("list '" + field.name + "' counts " +
                             std::to_string(column.offsets.back()) + " elements, its values hold " +
                             std::to_string(column.children[0].length));
        }
        break;
      }
    }
    return column;
  }

 private:
  // The level positions at which the slots of a field start, in one leaf's level stream: one
  // per record, then one per element of every enclosing list.
  static std::vector<int64_t> Slots(const LeafData& leaf, const std::vector<const Field*>& lists) {
    const int64_t n = leaf.num_levels;
    const auto& rep = leaf.repetition_levels;
    const auto& def = leaf.definition_levels;
    std::vector<int64_t> slots;
    slots.reserve(n);
    for (int64_t i = 0; i < n; ++i) {
      if (rep.empty() || rep[i] == 0) slots.push_back(i);
    }
    for (const Field* list : lists) {
      std::vector<int64_t> next;
      next.reserve(n);
      for (size_t k = 0; k < slots.size(); ++k) {
        int64_t start = slots[k];
        int64_t end = k + 1 < slots.size() ? slots[k + 1] : n;
        if (def.empty() || def[start] < list->element_definition_level) continue;
        next.push_back(start);
        for (int64_t j = start + 1; j < end; ++j) {
          if (rep[j] == list->repetition_level) next.push_back(j);
        }
      }
      slots.swap(next);
    }
    return slots;
  }

  static void SetValidity(const LeafData& leaf, const std::vector<int64_t>& slots, int16_t level,
                          ColumnVector* column) {
    const auto& def = leaf.definition_levels;
    column->validity.resize(slots.size());
    bool any_null = false;
    for (size_t k = 0; k < slots.size(); ++k) {
      bool valid = def.empty() || def[slots[k]] >= level;
      column->validity[k] = valid;
      any_null |= !valid;
    }
    if (!any_null) column->validity.clear();
  }

  static void ListOffsets(const Field& field, const LeafData& leaf,
                          const std::vector<int64_t>& slots, ColumnVector* column) {
    const auto& rep = leaf.repetition_levels;
    const auto& def = leaf.definition_levels;
    const int64_t n = leaf.num_levels;
    column->offsets.resize(slots.size() + 1);
    column->offsets[0] = 0;
    int64_t total = 0;
    for (size_t k = 0; k < slots.size(); ++k) {
      int64_t start = slots[k];
      int64_t end = k + 1 < slots.size() ? slots[k + 1] : n;
      if (!def.empty() && def[start] >= field.element_definition_level) {
        ++total;
        for (int64_t j = start + 1; j < end; ++j) total += rep[j] == field.repetition_level;
      }
      column->offsets[k + 1] = total;
    }
  }

  ColumnVector FlatPrimitive(const Field& field, LeafData& leaf) {
    ColumnVector column;
    column.field = &field;
    column.length = leaf.num_levels;
    if (leaf.definition_levels.empty() ||
        leaf.values.count == leaf.num_levels) {  // no nulls: take the values as they are
      if (leaf.values.count != leaf.num_levels) {
        throw InvalidError("column '" + field.name + "' has " + std::to_string(leaf.num_levels) +
                           " rows but " + std::to_string(leaf.values.count) + " values");
      }
      column.data = std::move(leaf.values.data);
      column.offsets = std::move(leaf.values.offsets);
      return column;
    }
    std::vector<int64_t> slots(static_cast<size_t>(leaf.num_levels));
    for (int64_t i = 0; i < leaf.num_levels; ++i) slots[i] = i;
    SetValidity(leaf, slots, field.definition_level, &column);
    Primitive(field, leaf, slots, &column);
    return column;
  }

  // Scatters the dense values of a leaf into its slots, leaving nulls zeroed or empty.
  static void Primitive(const Field& field, LeafData& leaf, const std::vector<int64_t>& slots,
                        ColumnVector* column) {
    const auto& def = leaf.definition_levels;
    const int16_t max_def = field.definition_level;
    const ValueBuffer& values = leaf.values;
    const size_t n = slots.size();
    auto present = [&](int64_t position) { return def.empty() || def[position] == max_def; };
    // The value of slot k is the number of present positions before it.
    int64_t cursor_position = 0, value_index = 0;
    auto value_at = [&](int64_t position) {
      for (; cursor_position < position; ++cursor_position) value_index += present(cursor_position);
      return value_index;
    };
    if (values.is_byte_array()) {
      column->offsets.resize(n + 1);
      column->offsets[0] = 0;
      for (size_t k = 0; k < n; ++k) {
        int64_t p = slots[k];
        if (present(p)) {
          int64_t v = value_at(p);
          if (v >= values.count) Overrun(field, values.count);
          AppendBytes(column->data, values.data.data() + values.offsets[v],
                      static_cast<size_t>(values.offsets[v + 1] - values.offsets[v]));
        }
        column->offsets[k + 1] = static_cast<int64_t>(column->data.size());
      }
      return;
    }
    const size_t width = static_cast<size_t>(values.width);
    column->data.assign(n * width, 0);
    for (size_t k = 0; k < n; ++k) {
      int64_t p = slots[k];
      if (!present(p)) continue;
      int64_t v = value_at(p);
      if (v >= values.count) Overrun(field, values.count);
      std::memcpy(column->data.data() + k * width, values.data.data() + v * width, width);
    }
  }

  [[noreturn]] static void Overrun(const Field& field, int64_t count) {
    throw InvalidError("column '" + field.name + "' has more non-null levels than its " +
                       std::to_string(count) + " values");
  }

  std::vector<LeafData>& leaves_;
};

}  // namespace

ColumnVector AssembleField(const Field& field, std::vector<LeafData>& leaves, int64_t num_rows) {
  Assembler assembler(leaves);
  std::vector<const Field*> lists;
  ColumnVector column = assembler.Build(field, lists);
  if (column.length != num_rows) {
    throw InvalidError("column '" + field.name + "' holds " + std::to_string(column.length) +
                       " rows, its row group declares " + std::to_string(num_rows));
  }
  return column;
}

}  // namespace shoal::parquet
