//! The protobuf wire format: a reader of (field number, value) pairs and a writer.

pub struct Reader<'a> {
    b: &'a [u8],
    i: usize,
}

pub enum Field<'a> {
    Varint(u64),
    Fixed64(u64),
    Bytes(&'a [u8]),
    Fixed32,
}

impl<'a> Reader<'a> {
    pub fn new(b: &'a [u8]) -> Self {
        Reader { b, i: 0 }
    }
    pub fn done(&self) -> bool {
        self.i >= self.b.len()
    }
    pub fn varint(&mut self) -> Result<u64, String> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let byte = *self.b.get(self.i).ok_or("unexpected EOF")?;
            self.i += 1;
            v |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err("proto: integer overflow".into())
    }
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        let end = self
            .i
            .checked_add(n)
            .filter(|e| *e <= self.b.len())
            .ok_or("unexpected EOF")?;
        let s = &self.b[self.i..end];
        self.i = end;
        Ok(s)
    }
    /// The next field; `None` at the end.
    pub fn next(&mut self) -> Result<Option<(u32, Field<'a>)>, String> {
        if self.done() {
            return Ok(None);
        }
        let key = self.varint()?;
        let num = u32::try_from(key >> 3).map_err(|_| "proto: illegal tag")?;
        if num == 0 {
            return Err("proto: illegal tag 0".into());
        }
        let field = match key & 7 {
            0 => Field::Varint(self.varint()?),
            1 => {
                let b = self.take(8)?;
                Field::Fixed64(u64::from_le_bytes(b.try_into().unwrap_or([0; 8])))
            }
            2 => {
                let n = usize::try_from(self.varint()?).map_err(|_| "proto: negative length")?;
                Field::Bytes(self.take(n)?)
            }
            5 => {
                self.take(4)?;
                Field::Fixed32
            }
            w => return Err(format!("proto: illegal wireType {w}")),
        };
        Ok(Some((num, field)))
    }
}

#[derive(Default)]
pub struct Writer {
    pub buf: Vec<u8>,
}

impl Writer {
    fn varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.buf.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.buf.push(v as u8);
    }
    fn key(&mut self, num: u32, wire: u64) {
        self.varint((u64::from(num) << 3) | wire);
    }
    pub fn varint_field(&mut self, num: u32, v: u64) {
        self.key(num, 0);
        self.varint(v);
    }
    pub fn fixed64_field(&mut self, num: u32, v: u64) {
        self.key(num, 1);
        self.buf.extend_from_slice(&v.to_le_bytes());
    }
    pub fn bytes(&mut self, num: u32, b: &[u8]) {
        self.key(num, 2);
        self.varint(b.len() as u64);
        self.buf.extend_from_slice(b);
    }
}
