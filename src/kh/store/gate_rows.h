// How the gate records of records.h (noise floors, gates, decisions; schema version 2) map onto
// the store's tables: the column lists, reading a row into a record and inserting a record. Only
// the artifact store uses it.
#pragma once

#include <string>
#include <vector>

#include "kh/store/records.h"

namespace kh {

class SqliteDb;
class Statement;

namespace rows {

// Column lists in the order the read_* functions expect them.
extern const char* const kNoiseFloorColumns;
extern const char* const kGateColumns;
extern const char* const kDecisionColumns;

NoiseFloorRecord read_noise_floor(const SqliteDb& db, const Statement& s);
GateRecord read_gate(const SqliteDb& db, const Statement& s);
DecisionRecord read_decision(const SqliteDb& db, const Statement& s);
std::vector<GateRecord> read_gates(const SqliteDb& db, Statement& s);
std::vector<DecisionRecord> read_decisions(const SqliteDb& db, Statement& s);

// Each inserts the record unless its id is stored already, after replacing invalid UTF-8 in its
// text and filling created_at, then id, when empty; returns the id.
std::string insert_noise_floor(SqliteDb& db, NoiseFloorRecord r);
std::string insert_gate(SqliteDb& db, GateRecord r);
std::string insert_decision(SqliteDb& db, DecisionRecord r);

}  // namespace rows
}  // namespace kh
