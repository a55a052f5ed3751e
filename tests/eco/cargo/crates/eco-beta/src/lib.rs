/// The greeting of eco-alpha, louder.
pub fn shout() -> String {
    eco_alpha::GREETING.to_uppercase()
}
