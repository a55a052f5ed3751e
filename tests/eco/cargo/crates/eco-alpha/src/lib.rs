include!(concat!(env!("OUT_DIR"), "/gen.rs"));
