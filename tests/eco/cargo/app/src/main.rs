fn main() {
    println!("{}", eco_alpha::GREETING);
    println!("{}", eco_beta::shout());
}
