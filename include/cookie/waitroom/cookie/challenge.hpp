#pragma once
// Proof of work on joining (rooms[].challenge): a new visitor who would be queued gets a puzzle
// and joins the queue only with a solution. The puzzle is bound to the visitor's cookie, which
// dates it and holds its difficulty (sealed), so the gateway keeps nothing per challenge:
//
//   seed     = the last 22 characters of the cookie's sealed value (they cover its GCM tag: unique
//              to this cookie, unpredictable without the key, and useless for forging one)
//   solution = 1–64 characters of A-Z a-z 0-9 _ - chosen by the client
//   solved   ⇔ SHA-256(seed ‖ solution) begins with `difficulty` zero bits
//
// Verifying costs one hash of at most 86 bytes.

#include <cstddef>
#include <string_view>

namespace waitroom::cookie {

inline constexpr std::size_t challenge_seed_size = 22;
inline constexpr std::size_t max_solution_size = 64;

// The seed of the challenge bound to a sealed cookie value; "" when the value is too short to
// be a cookie.
std::string_view challenge_seed(std::string_view sealed_value) noexcept;

// Whether `solution` solves the challenge of `seed` at `difficulty` leading zero bits. A seed or
// solution of the wrong form never does; neither does a difficulty above 256.
bool solves(std::string_view seed, std::string_view solution, unsigned difficulty) noexcept;

// Leading zero bits of a digest (for tests and the solver benchmark).
unsigned leading_zero_bits(const unsigned char* digest, std::size_t size) noexcept;

}  // namespace waitroom::cookie
