// Decoder tests on raw 512-byte SMART pages written by
// tests/fixtures/nvme_smart/generate.py from the spec layout.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>

#include "collectors/nvme/nvme_smart_log.hpp"

using namespace iodiag::nvme;

namespace {

std::vector<uint8_t> fixture(const std::string& name) {
    const std::string path = std::string(IODIAG_FIXTURES) + "/nvme_smart/" + name;
    std::ifstream in(path, std::ios::binary);
    EXPECT_TRUE(in) << path;
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::string decode_error(const std::string& name) {
    try {
        decode_smart_log(fixture(name), name);
    } catch (const SmartDecodeError& e) {
        return e.what();
    }
    return "";
}

}  // namespace

TEST(NvmeSmartLog, HealthyPageDecodesEveryField) {
    const SmartLog s = decode_smart_log(fixture("healthy.bin"), "healthy");
    EXPECT_EQ(s.critical_warning, 0);
    EXPECT_EQ(s.temperature_k, 308);
    EXPECT_DOUBLE_EQ(s.temperature_c(), 35.0);
    EXPECT_EQ(s.avail_spare, 100);
    EXPECT_EQ(s.spare_thresh, 10);
    EXPECT_EQ(s.percent_used, 3);
    EXPECT_EQ(s.endurance_grp_critical_warning_summary, 0);
    EXPECT_EQ(to_decimal(s.data_units_read), "13898198");
    EXPECT_EQ(to_decimal(s.data_units_written), "21210849");
    EXPECT_EQ(to_decimal(s.host_read_commands), "459217404");
    EXPECT_EQ(to_decimal(s.host_write_commands), "211574086");
    EXPECT_EQ(to_decimal(s.controller_busy_time), "310");
    EXPECT_EQ(to_decimal(s.power_cycles), "36");
    EXPECT_EQ(to_decimal(s.power_on_hours), "842");
    EXPECT_EQ(to_decimal(s.unsafe_shutdowns), "31");
    EXPECT_EQ(to_decimal(s.media_errors), "0");
    EXPECT_EQ(to_decimal(s.num_err_log_entries), "35");
    EXPECT_EQ(s.temperature_sensor_k[0], 307);
    EXPECT_EQ(s.temperature_sensor_k[1], 314);
    EXPECT_EQ(s.temperature_sensor_k[2], 0);   // not implemented
    EXPECT_EQ(critical_warning_names(s.critical_warning), "");
    // 21210849 data units x 512000 bytes
    EXPECT_EQ(to_decimal(data_units_to_bytes(s.data_units_written)), "10859954688000");
}

TEST(NvmeSmartLog, WornDriveKeepsCountersAbove64BitsExact) {
    const SmartLog s = decode_smart_log(fixture("worn95.bin"), "worn");
    EXPECT_EQ(s.percent_used, 95);
    EXPECT_EQ(s.avail_spare, 60);
    // 2^64 + 12345: a double would round it, the exact form must not.
    EXPECT_EQ(to_decimal(s.data_units_written), "18446744073709563961");
    EXPECT_DOUBLE_EQ(to_double(s.data_units_written), 18446744073709551616.0 + 12345.0);
    EXPECT_EQ(to_decimal(s.media_errors), "2");
    EXPECT_EQ(to_decimal(s.power_on_hours), "43000");
    EXPECT_EQ(s.thm_temp1_trans_count, 4u);
    EXPECT_EQ(s.thm_temp2_trans_count, 1u);
    EXPECT_EQ(s.thm_temp1_total_time, 3600u);
    EXPECT_EQ(s.thm_temp2_total_time, 120u);
}

TEST(NvmeSmartLog, SpareBelowThreshold) {
    const SmartLog s = decode_smart_log(fixture("spare_low.bin"), "spare");
    EXPECT_EQ(s.avail_spare, 4);
    EXPECT_EQ(s.spare_thresh, 10);
    EXPECT_EQ(critical_warning_names(s.critical_warning), "available_spare");
}

TEST(NvmeSmartLog, CriticalWarningBitsByName) {
    const SmartLog s = decode_smart_log(fixture("critical_bits.bin"), "bits");
    EXPECT_EQ(s.critical_warning, 0x1A);
    EXPECT_EQ(critical_warning_names(s.critical_warning),
              "temperature,read_only,volatile_backup_failed");
    EXPECT_EQ(s.endurance_grp_critical_warning_summary, 0x04);
}

TEST(NvmeSmartLog, HotDrive) {
    const SmartLog s = decode_smart_log(fixture("hot.bin"), "hot");
    EXPECT_DOUBLE_EQ(s.temperature_c(), 80.0);
    EXPECT_EQ(s.warning_temp_time, 17u);
    EXPECT_EQ(s.critical_comp_time, 2u);
    EXPECT_EQ(s.temperature_sensor_k[0], 355);
}

TEST(NvmeSmartLog, TruncatedBufferIsAClearError) {
    const std::string err = decode_error("truncated.bin");
    EXPECT_NE(err.find("truncated.bin"), std::string::npos) << err;
    EXPECT_NE(err.find("truncated: 300 bytes, need 512"), std::string::npos) << err;
    EXPECT_THROW(decode_smart_log(nullptr, 0, "null"), SmartDecodeError);
}

TEST(NvmeSmartLog, GarbageIsRejected) {
    for (const char* name : {"garbage.bin", "all_ff.bin", "all_zero.bin"}) {
        const std::string err = decode_error(name);
        EXPECT_NE(err.find("not a valid NVMe SMART / Health log page"), std::string::npos)
            << name << ": " << err;
    }
    EXPECT_NE(decode_error("all_zero.bin").find("composite temperature 0 K"), std::string::npos);
    EXPECT_NE(decode_error("all_ff.bin").find("reserved bits 6-7"), std::string::npos);
}

TEST(NvmeSmartLog, EveryCorruptedReservedByteIsRejected) {
    auto raw = fixture("healthy.bin");
    for (std::size_t i : {7u, 31u, 232u, 511u}) {
        auto bad = raw;
        bad[i] = 0x5a;
        EXPECT_THROW(decode_smart_log(bad, "bad"), SmartDecodeError) << "byte " << i;
    }
    auto spare = raw;
    spare[3] = 101;
    EXPECT_THROW(decode_smart_log(spare, "spare"), SmartDecodeError);
}

TEST(NvmeSmartLog, IdentifyThresholds) {
    const auto id = fixture("identify_ctrl.bin");
    const auto t = decode_identify_thresholds(id.data(), id.size(), "id");
    ASSERT_TRUE(t.warning_k && t.critical_k);
    EXPECT_EQ(*t.warning_k, 343);
    EXPECT_EQ(*t.critical_k, 358);
    std::vector<uint8_t> zero(4096, 0);
    EXPECT_FALSE(decode_identify_thresholds(zero.data(), zero.size(), "z").warning_k);
    EXPECT_THROW(decode_identify_thresholds(zero.data(), 100, "short"), SmartDecodeError);
}

TEST(NvmeSmartLog, DecimalOfLargest128BitValue) {
    EXPECT_EQ(to_decimal(~static_cast<u128>(0)), "340282366920938463463374607431768211455");
    EXPECT_EQ(to_decimal(0), "0");
    // Saturates instead of wrapping.
    EXPECT_EQ(data_units_to_bytes(~static_cast<u128>(0)), ~static_cast<u128>(0));
}
